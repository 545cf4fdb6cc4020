# tsne-curator image for the app and the workers.
#   docker build -t tsne-curator .                      # CUDA build (PyPI's torch wheels)
#   docker build -t tsne-curator --build-arg VARIANT=cpu .   # CPU-only hosts: smaller image
FROM python:3.11-slim

ARG VARIANT=cuda
ENV PIP_NO_CACHE_DIR=1 PYTHONUNBUFFERED=1

WORKDIR /opt/tsne-curator
COPY pyproject.toml README.md ./
COPY app ./app
COPY worker ./worker
COPY tsne_curator ./tsne_curator
COPY assets ./assets

# The CPU variant takes torch/torchvision from PyTorch's CPU index (2.14.1+cpu satisfies
# the ==2.14.1 pin); the default takes the CUDA wheels from PyPI.
RUN if [ "$VARIANT" = "cpu" ]; then \
        pip install --index-url https://download.pytorch.org/whl/cpu \
            torch==2.14.1 torchvision==0.29.1; \
    fi \
    && pip install . \
    && useradd --create-home --uid 1000 curator \
    && mkdir -p /runs /data && chown curator /runs

USER curator
# Inside the container the app listens on all interfaces; docker-compose publishes the
# port on the host's 127.0.0.1 only.
ENV CURATOR_RUNS_ROOT=/runs CURATOR_DATA_ROOT=/data CURATOR_HOST=0.0.0.0 CURATOR_PORT=8050
EXPOSE 8050
CMD ["curator", "serve"]
