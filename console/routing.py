"""Websocket routes, one list for the whole console."""

from django.urls import path

from console.live.consumers import LiveConsumer

websocket_urlpatterns = [path("ws/live/", LiveConsumer.as_asgi())]
