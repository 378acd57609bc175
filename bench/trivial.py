"""The baseline of bench/bench_api.py: a FastAPI app whose one endpoint is an ``async def`` that touches nothing.

Served by the same uvicorn, with the same options, in the same run as the
service: what it answers per second is the framework's limit on this machine.
"""

from fastapi import FastAPI

app = FastAPI()


@app.get("/")
async def trivial() -> dict[str, str]:
    return {"status": "ok"}
