"""The embedded model (`local`, `local:PATH.gguf`): llama.cpp in a child process, and the
llama-server build the same llama.cpp serves models with."""
