class Model:
    def infer(self, inputs):
        return {"TENFOLD": inputs["INDEX"] * 10}
