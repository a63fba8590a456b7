"""The Binary Tensor Data Extension for oip-rest (``binary_tensor_data``)."""
