ARG BASE_IMAGE=ghcr.io/huggingface/openenv-base:latest
FROM ghcr.io/huggingface/openenv-base:latest
COPY . /app/env
RUN pip install "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.3.1" \
    fastapi
CMD ["uvicorn", "server.app:app"]
ENV ENABLE_WEB_INTERFACE=true
