import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';

// The Rust server serves the built app and the API on one origin; in development
// Vite forwards the server's paths so the browser still sees a single origin.
const server = 'http://127.0.0.1:8080';

export default defineConfig({
  plugins: [react()],
  build: {
    outDir: 'dist',
    emptyOutDir: true,
    // dist/.vite/manifest.json: which chunks each page needs (scripts/route-pages.mjs).
    manifest: true,
    rolldownOptions: {
      output: {
        // Each page is its own chunk (src/app/routes.tsx); React and the router, which every page
        // needs and which change only with an upgrade, are one chunk that stays cached across releases.
        codeSplitting: {
          groups: [{ name: 'react', test: /[\\/]node_modules[\\/](react|react-dom|react-router|scheduler|cookie|set-cookie-parser)[\\/]/ }],
        },
      },
    },
  },
  server: {
    proxy: {
      '/api': server,
      '/health': server,
      '/socket.io': { target: server, ws: true },
    },
  },
  test: {
    environment: 'jsdom',
    globals: true,
    setupFiles: ['./src/test/setup.ts'],
    include: ['src/**/*.test.{ts,tsx}'],
  },
});
