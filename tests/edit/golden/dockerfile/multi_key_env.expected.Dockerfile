FROM python:3.11-slim
# Three keys, one instruction.
ENV PYTHONDONTWRITEBYTECODE=1 \
  ENABLE_WEB_INTERFACE=true \
  PYTHONPATH=/app
COPY . .
CMD ["uvicorn", "server.app:app", "--port", "8004"]
