"""oip-rest: the Open Inference Protocol over HTTP."""
