"""Submit one job from an asyncio service of the team's own: ``python submit.py``, which
prints its job id. The broker is JOBSTREAM_BOOTSTRAP_SERVERS."""

import asyncio

from jobstream import AsyncJobClient, load_settings


async def main() -> str:
    async with AsyncJobClient(load_settings()) as client:
        return await client.submit(job_type="userproject.etl", owner="wheel",
                                   params={"rows": [1, 2, 3]})


if __name__ == "__main__":
    print(asyncio.run(main()))
