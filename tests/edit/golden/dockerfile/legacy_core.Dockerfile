FROM openenv-base:latest
WORKDIR /app
COPY src/core/ /app/src/core/
COPY envs/snake_env/ /app/envs/snake_env/
ENV PYTHONPATH=/app/src/core:/app/envs
CMD ["uvicorn", "envs.snake_env.server.app:app"]
