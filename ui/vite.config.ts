import { defineConfig } from 'vite';

// The page is served by kg-server at /ui (and in the tray app's window from the same
// URL), so every asset lives under /ui/ on the server's own origin. During `npm run
// dev`, API and WebSocket calls are proxied to a running `kg-memory serve`.
const server = process.env.KG_SERVER ?? 'http://127.0.0.1:8765';

export default defineConfig({
  base: '/ui/',
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    sourcemap: false,
    chunkSizeWarningLimit: 1200,
  },
  server: {
    proxy: {
      '/api': server,
      '/ws': { target: server.replace(/^http/, 'ws'), ws: true },
    },
  },
});
