FROM envtorch-base:latest
COPY src/openenv/core/ /app/src/openenv/core/
ENV PYTHONPATH="${PYTHONPATH}:/app"
ENV ENABLE_WEB_INTERFACE=false
CMD ["uvicorn", "envs.grid_world_env.server.app:app"]
