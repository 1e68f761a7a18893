/// <reference types="vitest/config" />
import { defineConfig } from "vite";

// Django serves the build: index.html through the SPA view, assets from STATIC_URL (/static/).
// In development `npm run dev` proxies the API, login and websocket to `manage.py runserver`.
const backend = process.env.LOCUS_BACKEND ?? "http://127.0.0.1:8000";

export default defineConfig(({ command }) => ({
  base: command === "build" ? "/static/" : "/",
  esbuild: { jsx: "automatic" },
  build: { outDir: "dist", emptyOutDir: true, sourcemap: true },
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
