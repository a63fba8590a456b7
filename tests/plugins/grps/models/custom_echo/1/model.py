class Model:
    def infer(self, inputs):
        return {"OUTPUT0": inputs["INPUT0"]}

    async def http(self, body, headers):
        if body == b"fail":
            raise ValueError("asked to fail")
        return body.upper() + b"|" + headers.get("x-probe", "").encode(), "text/plain"
