"""Business Logic Scripting as Triton writes it: execute() calls another model.

The call runs in the server's own process: no IPC, and the arrays reach
`simple` without a copy.
"""

import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def execute(self, requests):
        responses = []
        for request in requests:
            call = pb_utils.InferenceRequest(
                model_name="simple",
                model_version=-1,
                requested_output_names=["OUTPUT0", "OUTPUT1"],
                inputs=[
                    pb_utils.get_input_tensor_by_name(request, "INPUT0"),
                    pb_utils.get_input_tensor_by_name(request, "INPUT1"),
                ],
            )
            answer = call.exec()
            if answer.has_error():
                error = pb_utils.TritonError(f"simple failed: {answer.error().message()}")
                responses.append(pb_utils.InferenceResponse(error=error))
                continue
            outputs = []
            for name in ("OUTPUT0", "OUTPUT1"):
                inner = pb_utils.get_output_tensor_by_name(answer, name).as_numpy()
                outputs.append(pb_utils.Tensor(name, inner * 10))
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
