"""Websocket routes, one list for the whole console (the live app adds its consumers)."""

from django.urls import URLPattern

websocket_urlpatterns: list[URLPattern] = []
