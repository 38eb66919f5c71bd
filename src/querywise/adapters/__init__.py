"""Framework adapters (optional extras): querywise inside a LangChain pipeline, and a LangChain
retriever as querywise's retriever. `pip install 'querywise[langchain]'`.
The same both ways for LlamaIndex: `querywise.adapters.llamaindex`, `pip install 'querywise[llamaindex]'`."""
