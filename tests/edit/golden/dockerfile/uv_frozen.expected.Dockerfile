FROM ghcr.io/huggingface/openenv-base:latest AS builder
WORKDIR /app/env
COPY . /app/env
# Pinned uv 0.13.8 (added by openenv-release; the base image's uv is older)
COPY --from=ghcr.io/astral-sh/uv:0.13.8 /uv /uvx /usr/local/bin/
RUN --mount=type=cache,target=/root/.cache/uv \
    if [ -f uv.lock ]; then \
        uv sync --no-install-project --no-editable; \
    else \
        uv sync --no-install-project --no-editable; \
    fi
RUN --mount=type=cache,target=/root/.cache/uv uv sync --no-editable && echo done

FROM ghcr.io/huggingface/openenv-base:latest
COPY --from=builder /app/env /app/env
ENV ENABLE_WEB_INTERFACE=true
CMD ["uvicorn", "server.app:app"]
