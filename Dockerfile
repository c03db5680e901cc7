# BERTScope on CPU: the app, the bundled demo model and demo heads, Streamlit on 0.0.0.0:8501 inside the
# container (the container's network is the boundary; publish the port only where you mean to).
FROM python:3.11-slim

ENV PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HF_HUB_OFFLINE=1 \
    BERTSCOPE_ALLOW_HUB=0

WORKDIR /srv/bertscope
# Dependencies first, so a code change does not reinstall torch. torch is pinned in pyproject.toml; the CPU
# index keeps pip from pulling the multi-GB CUDA build.
COPY pyproject.toml README.md ./
COPY bert_core ./bert_core
COPY app ./app
RUN pip install --extra-index-url https://download.pytorch.org/whl/cpu -e .
COPY assets ./assets

# Models on a shared read-only volume go under /models (see docs/deploy.md); the bundled ones are always allowed.
ENV BERTSCOPE_MODEL_ROOTS=/models:/srv/bertscope/assets \
    BERTSCOPE_MODEL=/srv/bertscope/assets/demo-model
EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).status != 200)"
CMD ["bertscope", "--shared", "--address", "0.0.0.0", "--port", "8501", "--server.headless", "true"]
