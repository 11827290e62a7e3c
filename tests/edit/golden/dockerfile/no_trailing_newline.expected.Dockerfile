FROM python:3.11-slim
COPY . /app
CMD uvicorn server.app:app --port ${PORT:-8000}
ENV ENABLE_WEB_INTERFACE=true
