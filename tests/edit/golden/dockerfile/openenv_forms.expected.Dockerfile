FROM python:3.11-slim
# OpenEnv named through build variables, shell strings and other installers
ARG OE_SPEC=openenv[core]@git+https://github.com/huggingface/OpenEnv.git@v0.3.1
ENV OE2=openenv[core]@git+https://github.com/huggingface/OpenEnv.git@v0.3.1 OTHER=1
ENV PKGS="fastapi openenv[core]@git+https://github.com/huggingface/OpenEnv.git@v0.3.1"
ENV APP=openenv
ENV ENABLE_WEB_INTERFACE=true
RUN pip install $OE_SPEC
RUN pip install "$OE2" ${PKGS}
RUN sh -c 'pip install "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.3.1"'
RUN bash -lc 'pip install -U "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.3.1" && echo ok'
RUN uv tool install "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.3.1"
RUN pipx install "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.3.1"
RUN uv add --group dev "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.3.1" fastapi
RUN uv run --with "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.3.1" openenv validate
RUN uvx --from "openenv[core] @ git+https://github.com/huggingface/OpenEnv.git@v0.3.1" openenv validate
CMD ["python", "-m", "openenv"]
