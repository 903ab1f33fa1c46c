# Sourced by the bench's device scripts (bench/gpu_*.sh): the carried wheels (.whl: the database's and tlparse's)
# installed into /tmp/site and put on the path, tlparse named for the worker where it came with them.
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || exit 1
  export PYTHONPATH=/tmp/site PATH="/tmp/site/bin:$PATH"
fi
[ -x /tmp/site/bin/tlparse ] && export COMPILE_LAB_TLPARSE=/tmp/site/bin/tlparse
export PYTHONUNBUFFERED=1
