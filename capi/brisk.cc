// brisk C API implementation: written with the C API.
