ARG BASE_IMAGE=ghcr.io/huggingface/openenv-base:latest
FROM ${BASE_IMAGE}
COPY . /app/env
RUN pip install "openenv[core]>=0.2.2" \
    fastapi
CMD ["uvicorn", "server.app:app"]
