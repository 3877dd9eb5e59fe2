import { defineConfig } from 'vitest/config';
import react from '@vitejs/plugin-react';

// The Rust server serves the built app and the API on one origin; in development
// Vite forwards the server's paths so the browser still sees a single origin.
const server = 'http://127.0.0.1:8080';

export default defineConfig({
  plugins: [react()],
  build: { outDir: 'dist', emptyOutDir: true },
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
