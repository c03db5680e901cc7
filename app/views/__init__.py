"""The app's pages, one file per view; app/registry.py lists them. Streamlit runs these files as scripts."""
