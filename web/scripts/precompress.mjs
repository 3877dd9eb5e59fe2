// Writes a Brotli (.br) and a gzip (.gz) copy beside each text file of the build (web/dist), for the
// server to send as is to browsers that accept them (src/routes/web_app.rs). Run after `vite build`.
// A copy that would not be smaller than the file is not written: the server then sends the file.
import { readdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { brotliCompressSync, constants, gzipSync } from 'node:zlib';

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'dist');
const TEXT = /\.(?:js|mjs|css|html|svg|json|txt|xml|map)$/;
// Smaller files fit in one packet either way.
const MIN_BYTES = 1024;

async function* files(dir) {
  for (const entry of await readdir(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) yield* files(full);
    else if (entry.isFile()) yield full;
  }
}

let written = 0;
for await (const file of files(dist)) {
  if (!TEXT.test(file)) continue;
  const source = await readFile(file);
  const copies = [
    ['.br', () => brotliCompressSync(source, {
      params: {
        [constants.BROTLI_PARAM_QUALITY]: constants.BROTLI_MAX_QUALITY,
        [constants.BROTLI_PARAM_SIZE_HINT]: source.length,
        [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT,
      },
    })],
    ['.gz', () => gzipSync(source, { level: 9 })],
  ];
  for (const [suffix, compress] of copies) {
    const target = file + suffix;
    const compressed = source.length >= MIN_BYTES ? compress() : null;
    if (compressed && compressed.length < source.length) {
      await writeFile(target, compressed);
      written += 1;
    } else {
      await rm(target, { force: true });
    }
  }
}
console.log(`precompressed: ${written} copies in ${path.relative(process.cwd(), dist) || '.'}`);
