"""The baselines of bench_overhead.py: N raw `openai` async chat calls, K in flight, nothing else,
through the SDK's default HTTP client (httpx) or, with `aiohttp`, the aiohttp transport moot uses.

    python benchmarks/raw_openai.py BASE_URL CALLS CONCURRENCY [httpx|aiohttp]
"""

from __future__ import annotations

import asyncio
import sys

import openai


async def main(base_url: str, calls: int, concurrency: int, transport: str) -> None:
    http = openai.DefaultAioHttpClient() if transport == "aiohttp" else None
    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0, http_client=http)
    slots = asyncio.Semaphore(concurrency)

    async def one(i: int) -> str:
        async with slots:
            reply = await client.chat.completions.create(
                model="bench", max_tokens=256, temperature=0.0,
                messages=[{"role": "user", "content": f"Synthetic post number {i}."}])
            return reply.choices[0].message.content

    replies = await asyncio.gather(*(one(i) for i in range(calls)))
    assert len(replies) == calls
    await client.close()


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] if len(sys.argv) > 4 else "httpx"))
