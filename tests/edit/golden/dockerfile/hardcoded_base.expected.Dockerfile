# Hardcoded base image: HF Spaces inject an empty BASE_IMAGE build-arg.
FROM ghcr.io/huggingface/openenv-base:latest AS builder
COPY . /app/env
FROM --platform=linux/amd64 ghcr.io/huggingface/openenv-base:latest
COPY --from=builder /app/env /app/env
ENV ENABLE_WEB_INTERFACE=true
CMD ["uvicorn", "server.app:app"]
