FROM --platform=linux/amd64 python:3.11-slim AS builder
RUN pip install --no-cache-dir "openenv[core]>=0.2.2" && \
    pip install --no-cache-dir git+https://github.com/huggingface/OpenEnv.git
FROM mcr.microsoft.com/playwright/python:v1.44.0-jammy
COPY --from=builder /usr/local /usr/local
CMD ["python", "-m", "server.app"]
