/// <reference types="vitest/config" />
import { defineConfig } from "vite";

// Django serves the build: index.html through the SPA view, assets from STATIC_URL (/static/).
// In development `npm run dev` proxies the API, login and websocket to `make run` on :8000.
const backend = "http://127.0.0.1:8000";

export default defineConfig(({ command }) => ({
  base: command === "build" ? "/static/" : "/",
  esbuild: { jsx: "automatic" },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    rollupOptions: {
      onwarn(warning, warn) {
        // react-router ships "use client" directives, meaningless outside React Server Components.
        if (warning.code !== "MODULE_LEVEL_DIRECTIVE") warn(warning);
      },
    },
  },
  server: {
    proxy: {
      "/api": backend,
      "/accounts": backend,
      "/admin": backend,
      "/static/admin": backend,
      "/ws": { target: backend.replace(/^http/, "ws"), ws: true },
    },
  },
  test: { environment: "node", include: ["src/**/*.test.ts"] },
}));
