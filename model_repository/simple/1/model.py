"""Sum and difference of two INT32 tensors."""


class Model:
    def infer(self, inputs):
        a, b = inputs["INPUT0"], inputs["INPUT1"]
        return {"OUTPUT0": a + b, "OUTPUT1": a - b}
