"""Framework adapters (optional extras): querywise inside a LangChain pipeline, and a LangChain
retriever as querywise's retriever. `pip install 'querywise[langchain]'`."""
