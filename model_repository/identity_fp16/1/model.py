"""Identity: OUTPUT0 is INPUT0, the same array (no copy)."""


class Model:
    async def infer(self, inputs):
        return {"OUTPUT0": inputs["INPUT0"]}
