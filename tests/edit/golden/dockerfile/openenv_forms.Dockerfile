FROM python:3.11-slim
# OpenEnv named through build variables, shell strings and other installers
ARG OE_SPEC=openenv-core==0.2.1
ENV OE2="openenv==0.2.1" OTHER=1
ENV PKGS "fastapi openenv-core>=0.2"
ENV APP=openenv
RUN pip install $OE_SPEC
RUN pip install "$OE2" ${PKGS}
RUN sh -c "pip install openenv-core==0.2.1"
RUN bash -lc 'pip install -U openenv-core==0.2.1 && echo ok'
RUN uv tool install openenv-core==0.2.1
RUN pipx install openenv-core==0.2.1
RUN uv add --group dev openenv-core==0.2.1 fastapi
RUN uv run --with openenv-core==0.2.1 openenv validate
RUN uvx --from openenv-core==0.2.1 openenv validate
CMD ["python", "-m", "openenv"]
