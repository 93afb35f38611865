"""The upstream connection pools: one per endpoint, even where endpoints share an address."""

from __future__ import annotations

import asyncio

from phalanx.router.upstream import Upstream


async def _serve(accepted: list[int]) -> tuple[asyncio.Server, int]:
    """A keep-alive HTTP server that numbers its connections and answers with the number."""

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(len(accepted))
        n = accepted[-1]
        try:
            while await reader.readuntil(b"\r\n\r\n"):
                body = str(n).encode()
                writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()
            await writer.wait_closed()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    return server, int(server.sockets[0].getsockname()[1])


def test_endpoints_at_one_address_each_get_their_own_connections() -> None:
    async def main() -> list[bytes]:
        accepted: list[int] = []
        server, port = await _serve(accepted)
        upstream = Upstream()
        answers = []
        try:
            for ref in ("pod-a", "pod-a", "pod-b", "pod-a", "pod-b"):
                r = await upstream.request("127.0.0.1", port, "GET", "/", [], None, ref=ref)
                answers.append(await r.read())
                upstream.release("127.0.0.1", port, r, ref)
        finally:
            upstream.close()
            await asyncio.sleep(0.1)  # the handlers see EOF and close their side
            server.close()
            await server.wait_closed()
        return answers

    # pod-a's connection (0) is kept for pod-a; pod-b opens its own (1) and keeps it
    assert asyncio.run(main()) == [b"0", b"0", b"1", b"0", b"1"]


def test_the_pools_of_endpoints_whose_connections_all_closed_are_forgotten() -> None:
    async def main() -> list[tuple[str, int, str]]:
        accepted: list[int] = []
        server, port = await _serve(accepted)
        upstream = Upstream()
        try:
            r = await upstream.request("127.0.0.1", port, "GET", "/", [], None, ref="gone")
            await r.read()
            upstream.release("127.0.0.1", port, r, "gone")
            for conn in upstream.idle[("127.0.0.1", port, "gone")]:
                conn.close()  # as when the pod's process ends
            r = await upstream.request("127.0.0.1", port, "GET", "/", [], None, ref="new")
            await r.read()
            upstream.release("127.0.0.1", port, r, "new")
            return sorted(upstream.idle)
        finally:
            upstream.close()
            await asyncio.sleep(0.1)
            server.close()
            await server.wait_closed()

    [(_, _, ref)] = asyncio.run(main())
    assert ref == "new"
