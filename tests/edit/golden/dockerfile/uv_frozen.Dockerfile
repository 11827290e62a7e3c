FROM ghcr.io/huggingface/openenv-base:latest AS builder
WORKDIR /app/env
COPY . /app/env
RUN --mount=type=cache,target=/root/.cache/uv \
    if [ -f uv.lock ]; then \
        uv sync --frozen --no-install-project --no-editable; \
    else \
        uv sync --no-install-project --no-editable; \
    fi
RUN --mount=type=cache,target=/root/.cache/uv uv sync --no-editable --frozen && echo done

FROM ghcr.io/huggingface/openenv-base:latest
COPY --from=builder /app/env /app/env
ENV ENABLE_WEB_INTERFACE=true
CMD ["uvicorn", "server.app:app"]
