"""The point reads of request handlers on PostgreSQL: a few autocommit asynchronous psycopg connections, each
statement within a time limit."""

from __future__ import annotations

import asyncio
import contextlib

import psycopg
from sqlalchemy.engine import URL


async def _rows(connection: psycopg.AsyncConnection, sql: str, parameters: tuple) -> list[tuple]:
    cursor = await connection.execute(sql, parameters)
    return await cursor.fetchall()


async def _abandon(query: asyncio.Future) -> None:
    """Stop a statement at once.  Interrupted, psycopg asks the server to cancel it and waits up to 10 s for that
    (a server that stopped answering never does); interrupted again, it closes the connection there and then."""
    for _ in range(3):
        if query.done():
            break
        query.cancel()
        await asyncio.sleep(0.01)
    with contextlib.suppress(BaseException):
        await query


class AsyncReads:
    """A few autocommit psycopg connections for the point reads of request handlers on PostgreSQL.

    Opened as needed, up to ``size``; a connection that fails is dropped (the
    next read opens another).  Each statement has a time limit.
    """

    def __init__(
        self, url: URL, size: int = 4, timeout: float = 5.0, pooled: bool = False, bounded: bool = False
    ) -> None:
        self.conninfo = url.set(drivername="postgresql").render_as_string(hide_password=False)
        self.size, self.timeout, self.pooled = size, timeout, pooled
        #: Each statement bounded here too (a replica's: a server that stops answering sends its readers on).
        self.bounded = bounded or pooled
        self.idle: list[psycopg.AsyncConnection] = []
        self.opened = 0
        self.available: asyncio.Condition | None = None

    async def fetch(self, sql: str, parameters: tuple, within: float | None = None) -> list[tuple]:
        """The rows of one statement; ``within`` seconds at most, if given (a check that must not wait long)."""
        seconds = within if within is not None else self.timeout if self.bounded else None
        if seconds is None:  # the server's statement_timeout bounds it
            connection = await self._take()
            try:
                rows = await _rows(connection, sql, parameters)
            except BaseException:
                await self._drop(connection)
                raise
            await self._give_back(connection)
            return rows
        # Through a pooler no startup option sets a statement timeout, and a replica may stop answering: the time
        # limit is kept here instead, for the wait for a connection too (and the connection dropped), with the
        # pooler's query_timeout for the server's side.
        deadline = asyncio.get_running_loop().time() + seconds
        try:
            async with asyncio.timeout_at(deadline):
                connection = await self._take()
        except TimeoutError as exc:
            raise psycopg.errors.QueryCanceled(f"no connection within {seconds:g} s") from exc
        query = asyncio.ensure_future(_rows(connection, sql, parameters))
        try:
            async with asyncio.timeout_at(deadline):
                rows = await asyncio.shield(query)
        except TimeoutError as exc:
            await _abandon(query)
            await self._drop(connection)
            raise psycopg.errors.QueryCanceled(f"no answer within {seconds:g} s") from exc
        except BaseException:
            await _abandon(query)
            await self._drop(connection)
            raise
        await self._give_back(connection)
        return rows

    async def _take(self) -> psycopg.AsyncConnection:
        if self.available is None:
            self.available = asyncio.Condition()
        async with self.available:
            while not self.idle and self.opened >= self.size:
                await self.available.wait()
            if self.idle:
                return self.idle.pop()
            self.opened += 1
        # Through a pooler, no prepared statements and no startup options (its own query_timeout bounds them).
        limits = (
            {"prepare_threshold": None}
            if self.pooled
            else {"options": f"-c statement_timeout={int(self.timeout * 1000)}"}
        )
        try:
            return await psycopg.AsyncConnection.connect(
                self.conninfo, autocommit=True, connect_timeout=max(1, int(self.timeout)), **limits
            )
        except BaseException:
            await self._forget()
            raise

    async def _give_back(self, connection: psycopg.AsyncConnection) -> None:
        assert self.available is not None  # made by the first connection asked for
        async with self.available:
            self.idle.append(connection)
            self.available.notify()

    async def _drop(self, connection: psycopg.AsyncConnection) -> None:
        await connection.close()
        await self._forget()

    async def _forget(self) -> None:
        assert self.available is not None  # made by the first connection asked for
        async with self.available:
            self.opened -= 1
            self.available.notify()

    async def close(self) -> None:
        for connection in self.idle:
            await connection.close()
        self.idle.clear()
        self.opened = 0
