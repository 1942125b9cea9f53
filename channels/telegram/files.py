"""Telegram files: photos (the largest size), documents, voice, video and audio, and albums
(items sharing a ``media_group_id``) gathered into one message.

Telegram announces each file's size in the update: every limit is checked on those sizes
before anything is downloaded, then the file is fetched with ``getFile`` and the file download
path by the gateway's downloader (gateway/downloads.py), read no further than the limit
allows. The download URL holds the bot token: it never appears in an error.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from aiogram import Bot
from aiogram.client.session.aiohttp import AiohttpSession
from aiogram.exceptions import TelegramAPIError, TelegramBadRequest
from aiogram.types import Message

from gateway.api import Attachment
from gateway.attachments import Budget, TooLarge, file_name, media_type, not_downloaded, size_text
from gateway.downloads import Downloader, FileHosts, RemoteFile

from .settings import TelegramSettings

ALBUM_MAX = 10  # items in a media group (Telegram's own limit)
BOT_API_DOWNLOAD_LIMIT = 20_000_000  # getFile refuses bigger files ("file is too big")


@dataclass(frozen=True, slots=True)
class FileRef:
    """A file of a message, before it is downloaded (``size`` as Telegram announced it)."""

    file_id: str
    name: str
    media_type: str
    size: int | None

    @property
    def url(self) -> None:
        """Known only once getFile answers (``BotApiFiles.locate``)."""
        return None


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
        self._downloads = BotApiFiles(bot, settings)
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
        assert isinstance(self.bot.session, AiohttpSession)  # the channel's (its connections)
        return await self._downloads.fetch(await self.bot.session.create_session(), refs)


class BotApiFiles(Downloader):
    """Files through the Bot API: ``getFile`` names each one's path (and its size, when the
    update did not), then the file download path serves it. Only the Bot API server is
    fetched from; its download URL holds the bot token, and no error text quotes it.
    """

    def __init__(self, bot: Bot, settings: TelegramSettings) -> None:
        super().__init__(settings, "Telegram", FileHosts(settings.telegram_api_base))
        self.bot = bot

    async def locate(self, item: RemoteFile, budget: Budget) -> str:
        assert isinstance(item, FileRef)  # what TelegramFiles hands over
        try:
            found = await self.bot.get_file(item.file_id)
        except TelegramBadRequest as exc:
            if "too big" in exc.message:
                raise TooLarge(
                    f"{item.name} is over the {size_text(BOT_API_DOWNLOAD_LIMIT)} the Telegram "
                    "Bot API lets bots download. Nothing was sent to the agent."
                ) from None
            raise not_downloaded(item.name, self.source, exc.message) from None
        except TelegramAPIError as exc:
            raise not_downloaded(item.name, self.source, exc.message) from None
        budget.admit(item.name, found.file_size)
        if not found.file_path:
            raise not_downloaded(item.name, self.source, "no file path given")
        return self.bot.session.api.file_url(self.bot.token, found.file_path)
