"""TensorFlow Serving's APIs for modelplatform: ``tfserving-rest`` and ``tfserving-grpc``.

Both edges share one translation layer: signatures and labels declared in a
model's configuration (:mod:`.signatures`), servable lookup with TF Serving's
messages (:mod:`.servables`), and predict/classify/regress over the dataplane
(:mod:`.service`).
"""
