"""Telegram files: photos (the largest size), documents, voice, video and audio, and albums
(items sharing a ``media_group_id``) gathered into one message.

Telegram announces each file's size in the update: every limit is checked on those sizes
before anything is downloaded, then the file is fetched with ``getFile`` and the file download
path, read no further than the limit allows. The download URL holds the bot token: it never
appears in an error.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

import aiohttp
from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.exceptions import TelegramAPIError, TelegramBadRequest
from aiogram.types import Message

from gateway.attachments import (
    Budget,
    TooLarge,
    file_name,
    media_type,
    not_downloaded,
    read_capped,
    size_text,
)
from gateway.inbound import Attachment

from .settings import TelegramSettings

ALBUM_MAX = 10  # items in a media group (Telegram's own limit)
CHUNK = 64 * 1024
BOT_API_DOWNLOAD_LIMIT = 20_000_000  # getFile refuses bigger files ("file is too big")


@dataclass(frozen=True, slots=True)
class FileRef:
    """A file of a message, before it is downloaded (``size`` as Telegram announced it)."""

    file_id: str
    name: str
    media_type: str
    size: int | None


def file_refs(message: Message) -> list[FileRef]:
    """The files of one message, in the order Telegram shows them (stickers are not files)."""
    refs: list[FileRef] = []
    if message.photo:  # several sizes of one photo: the largest is the photo
        photo = max(message.photo, key=lambda p: (p.width * p.height, p.file_size or 0))
        refs.append(FileRef(photo.file_id, "photo.jpg", "image/jpeg", photo.file_size))
    if message.voice is not None:
        voice = message.voice
        refs.append(
            FileRef(voice.file_id, "voice.ogg", voice.mime_type or "audio/ogg", voice.file_size)
        )
    for item, fallback in (
        (message.document, "document"),
        (message.video, "video.mp4"),
        (message.audio, "audio.mp3"),
    ):
        if item is not None:
            name = file_name(item.file_name, fallback)
            refs.append(
                FileRef(item.file_id, name, media_type(item.mime_type, name), item.file_size)
            )
    return refs


@dataclass
class _Album:
    items: list[Message]
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    def add(self, message: Message) -> None:
        self.items.append(message)
        self.arrived.set()

    async def settled(self, wait: float) -> None:
        """Until no item came for ``wait`` seconds, or the album is full."""
        while len(self.items) < ALBUM_MAX:
            self.arrived.clear()
            try:
                await asyncio.wait_for(self.arrived.wait(), wait)
            except TimeoutError:
                return


class TelegramFiles:
    def __init__(self, bot: Bot, settings: TelegramSettings) -> None:
        self.bot = bot
        self.settings = settings
        self._albums: dict[tuple[int, str], _Album] = {}

    async def collect(self, message: Message) -> tuple[Message, list[FileRef]] | None:
        """The message to handle and its files; None for an album item that another item's
        handling takes along. An album is handled by its first item once no other item came
        for ``telegram_media_group_wait`` seconds; its text is the caption (Telegram puts
        it on one item) and its files are every item's, in order.
        """
        group = message.media_group_id
        if group is None:
            return message, file_refs(message)
        key = (message.chat.id, group)
        album = self._albums.get(key)
        if album is not None:
            album.add(message)
            return None
        album = self._albums[key] = _Album([message])
        try:
            await album.settled(self.settings.telegram_media_group_wait)
        finally:
            del self._albums[key]
        items = sorted(album.items, key=lambda m: m.message_id)
        lead = next((m for m in items if m.caption), items[0])
        return lead, [ref for item in items for ref in file_refs(item)]

    async def fetch(self, refs: list[FileRef]) -> tuple[Attachment, ...]:
        """Download the files, within the limits; TooLarge or Unavailable otherwise."""
        announced = Budget.of(self.settings)
        for ref in refs:  # every limit, before the first download
            announced.take(ref.name, ref.size or 0)
        budget = Budget.of(self.settings)
        return tuple([await self._download(ref, budget) for ref in refs])

    async def _download(self, ref: FileRef, budget: Budget) -> Attachment:
        try:
            found = await self.bot.get_file(ref.file_id)
        except TelegramBadRequest as exc:
            if "too big" in exc.message:
                raise TooLarge(
                    f"{ref.name} is over the {size_text(BOT_API_DOWNLOAD_LIMIT)} the Telegram "
                    "Bot API lets bots download. Nothing was sent to the agent."
                ) from None
            raise not_downloaded(ref.name, "Telegram", exc.message) from None
        except TelegramAPIError as exc:
            raise not_downloaded(ref.name, "Telegram", exc.message) from None
        budget.admit(ref.name, found.file_size)
        if not found.file_path:
            raise not_downloaded(ref.name, "Telegram", "no file path given")
        url = self.bot.session.api.file_url(self.bot.token, found.file_path)
        assert isinstance(self.bot.session, AiohttpSession)  # the channel's (its connections)
        session = await self.bot.session.create_session()
        timeout = aiohttp.ClientTimeout(total=self.settings.attachment_fetch_timeout)
        try:  # no error text here quotes the URL: it holds the token
            async with session.get(url, timeout=timeout) as response:
                if response.status != 200:
                    raise not_downloaded(ref.name, "Telegram", f"HTTP {response.status}")
                budget.admit(ref.name, response.content_length)
                data = await read_capped(response.content.iter_chunked(CHUNK), ref.name, budget)
        except (aiohttp.ClientError, TimeoutError) as exc:
            raise not_downloaded(ref.name, "Telegram", type(exc).__name__) from None
        return Attachment(ref.name, ref.media_type, data)
