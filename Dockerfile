# BERTScope: the app, the bundled demo model and demo heads, Streamlit on 0.0.0.0:8501 inside the container
# (the container's network is the boundary; publish the port only where you mean to).
#   docker build -t bertscope .                                   CPU torch (the default)
#   docker build -t bertscope-gpu --build-arg TORCH_INDEX=https://download.pytorch.org/whl/cu128 .
# BASE may name any Debian-like image with Python 3.11 and its venv module (see docs/deploy.md).
ARG BASE=python:3.11-slim
FROM ${BASE}

# Where pip finds torch 2.13.0 (pinned in pyproject.toml): the CPU index keeps pip from pulling the multi-GB
# CUDA build; a CUDA index gives the GPU replica its build.
ARG TORCH_INDEX=https://download.pytorch.org/whl/cpu
ENV PIP_NO_CACHE_DIR=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    HF_HUB_OFFLINE=1 \
    BERTSCOPE_ALLOW_HUB=0 \
    PATH=/opt/venv/bin:$PATH

# A virtual environment, so the same steps work on python:3.11-slim and on a distribution's own Python
# (which refuses system-wide pip installs).
RUN python3 -m venv /opt/venv
WORKDIR /srv/bertscope
# Dependencies first, against empty packages, so a code change does not reinstall torch: the editable install
# points at these directories (every package pyproject.toml lists, and assets/), which the code then fills.
COPY pyproject.toml README.md ./
RUN mkdir -p app/views assets bert_core/checkpoints bert_core/finetuning bert_core/interpret bert_core/modeling \
        bert_core/pretraining \
    && touch bert_core/__init__.py app/__init__.py \
    && pip install --extra-index-url "${TORCH_INDEX}" -e . && pip check
COPY bert_core ./bert_core
COPY app ./app
COPY assets ./assets

# Models on a shared read-only volume go under /models (see docs/deploy.md); the bundled ones are always allowed.
ENV BERTSCOPE_MODEL_ROOTS=/models:/srv/bertscope/assets \
    BERTSCOPE_MODEL=/srv/bertscope/assets/demo-model
# Not root: nothing in the container needs it, and the models are read-only anyway.
RUN useradd --system --home /srv/bertscope bertscope
USER bertscope
EXPOSE 8501
HEALTHCHECK --interval=30s --timeout=5s --start-period=60s --retries=3 \
    CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8501/_stcore/health', timeout=4).status != 200)"
CMD ["bertscope", "--shared", "--address", "0.0.0.0", "--port", "8501", "--server.headless", "true"]
