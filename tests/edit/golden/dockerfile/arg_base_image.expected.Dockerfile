# An openenv-base env: builder + runtime stages.
ARG BASE_IMAGE=ghcr.io/huggingface/openenv-base:latest
FROM ghcr.io/huggingface/openenv-base:latest AS builder
WORKDIR /app/env
COPY . /app/env
RUN apt-get update && apt-get install -y --no-install-recommends git

FROM ghcr.io/huggingface/openenv-base:latest
COPY --from=builder /app/env /app/env
ENV PYTHONPATH="/app/env:$PYTHONPATH"
ENV ENABLE_WEB_INTERFACE=true
CMD ["sh", "-c", "cd /app/env && uvicorn server.app:app --host 0.0.0.0 --port 8000"]
