FROM --platform=linux/amd64 python:3.11-slim AS builder
RUN pip install --no-cache-dir "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.3.1" && \
    pip install --no-cache-dir "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.3.1"
FROM mcr.microsoft.com/playwright/python:v1.44.0-jammy
COPY --from=builder /usr/local /usr/local
CMD ["python", "-m", "server.app"]
ENV ENABLE_WEB_INTERFACE=true
