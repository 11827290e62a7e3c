FROM ghcr.io/huggingface/openenv-base:latest
WORKDIR /app
COPY src/core/ /app/src/core/
COPY src/openenv/ /app/src/openenv/
COPY envs/snake_env/ /app/envs/snake_env/
ENV PYTHONPATH=/app/src:/app/envs
ENV ENABLE_WEB_INTERFACE=true
CMD ["uvicorn", "envs.snake_env.server.app:app"]
