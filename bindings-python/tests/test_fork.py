"""After ``os.fork()``: the child gets a fresh runtime, and a store opened
before the fork fails with a clear error (``Closed``) instead of hanging."""

from __future__ import annotations

import asyncio
import json
import os

import leasehold

from conftest import Server


def in_child(work: object) -> dict[str, object]:
    """Runs ``work()`` in a forked child; what it returned (a JSON object)."""
    assert callable(work)
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            result = work()
        except BaseException as e:
            result = {"crashed": repr(e)}
        os.write(write, json.dumps(result).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    answer = json.loads(text)
    assert isinstance(answer, dict)
    return answer


def test_a_store_opened_before_fork_fails_in_the_child(server: Server) -> None:
    parent_memory = leasehold.memory()
    parent_server = leasehold.connect_blocking(server.url)
    lock = parent_memory.lock("py-fork")
    holding = parent_memory.lock("py-fork").hold("held")
    lease = holding.__enter__()

    def child() -> dict[str, object]:
        seen: dict[str, object] = {}
        for name, store in (("memory", parent_memory), ("server", parent_server)):
            try:
                with store.lock("py-fork").try_hold("k"):
                    seen[name] = "used a store of the parent"
            except leasehold.Closed as e:
                seen[name] = str(e)

        async def fresh() -> dict[str, object]:
            try:
                await parent_memory.try_acquire("m", ttl="1s")
            except leasehold.Closed as e:
                seen["async"] = str(e)
            mine = leasehold.memory()
            async with mine.lock("py-fork").hold("held") as held:
                seen["fresh_memory_fence"] = held.fence
            remote = await leasehold.connect(server.url)
            async with remote.lock("py-fork-child").hold("k") as held:
                seen["fresh_server_fence"] = held.fence
            await remote.close()
            return seen

        return asyncio.run(asyncio.wait_for(fresh(), 20))

    seen = in_child(child)
    assert "crashed" not in seen, seen
    for name in ("memory", "server", "async"):
        assert "fork" in str(seen[name]), seen
    assert isinstance(seen["fresh_memory_fence"], int)
    assert isinstance(seen["fresh_server_fence"], int)
    # The parent's stores and hold are untouched by the child.
    assert not lease.lost
    with lock.try_hold("held") as other:
        assert other is None
    holding.__exit__(None, None, None)
    with parent_server.lock("py-fork").hold("k") as again:
        assert again.fence > 0
    parent_server.close_blocking()
    parent_memory.close_blocking()
