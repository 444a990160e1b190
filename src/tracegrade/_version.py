"""The version of tracegrade (the package's ``__version__``), for the modules that write
it down (run records, reports) without importing the package's public face."""

__version__ = "0.1.0"
