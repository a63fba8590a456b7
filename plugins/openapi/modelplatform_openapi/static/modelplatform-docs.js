// The docs page: Swagger UI over the server's own OpenAPI documents (listed by the page).
// Swagger UI 4 renders OpenAPI 3.0 and refuses a 3.1 label: the documents are
// relabelled 3.0.3 for the renderer only (see page.py).
window.onload = function () {
  var holder = document.getElementById("swagger-ui");
  var documents = JSON.parse(holder.getAttribute("data-documents"));
  window.ui = SwaggerUIBundle({
    urls: documents,
    "urls.primaryName": documents[0].name,
    dom_id: "#swagger-ui",
    deepLinking: true,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis, SwaggerUIStandalonePreset],
    plugins: [SwaggerUIBundle.plugins.DownloadUrl],
    layout: "StandaloneLayout",
    responseInterceptor: function (response) {
      if (typeof response.text === "string" && response.text.indexOf('{"openapi":"3.1.') === 0) {
        response.text = response.text.replace(/^\{"openapi":"3\.1\.\d+"/, '{"openapi":"3.0.3"');
        if (response.body && typeof response.body === "object") {
          response.body.openapi = "3.0.3";
        }
      }
      return response;
    },
  });
};
