"""An open-loop asyncio + aiohttp load client written like vLLM's benchmark core
(benchmarks/benchmark_serving.py: a request generator that sleeps until each request's time,
one task per request on one aiohttp session), for the side-by-side in bench/load_bench.sh.

usage: aiohttp_open_loop.py URL RATE SECONDS   (constant arrivals; non-streaming POSTs)
Prints the achieved rate and the schedule lag (actual send - planned send).
"""
import asyncio
import sys
import time

import aiohttp

BODY = {"model": "m", "prompt": "hello world", "max_tokens": 1}


async def main(url, rate, seconds):
    lags = []
    done = 0
    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector) as session:
        async def one(planned):
            nonlocal done
            lags.append(time.perf_counter() - planned)
            async with session.post(url, json=BODY) as response:
                await response.read()
                if response.status == 200:
                    done += 1

        tasks = []
        start = time.perf_counter()
        n = int(rate * seconds)
        for i in range(n):
            planned = start + i / rate
            delay = planned - time.perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            tasks.append(asyncio.create_task(one(planned)))
        await asyncio.gather(*tasks)
        elapsed = time.perf_counter() - start
    lags.sort()
    p99 = lags[int(0.99 * (len(lags) - 1))]
    print(f"  aiohttp open loop {rate:>8.0f}/s planned: achieved {done / elapsed:>8.0f}/s, "
          f"ok {done}, lag p99 {p99 * 1e6:.0f} us")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], float(sys.argv[2]), float(sys.argv[3])))
