"""BERTScope's Streamlit app. Pages import only `bert_core`'s torch-free API and `app.charts`."""
