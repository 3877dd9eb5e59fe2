# Sourced by scripts/run and scripts/test: installs the web app's npm packages when they are missing
# or older than package-lock.json, and rebuilds web/dist when any web source is newer than it.

web_deps() {
  if [ ! -d web/node_modules ] || [ web/package-lock.json -nt web/node_modules/.package-lock.json ]; then
    echo "==> installing the web app's npm packages"
    npm --prefix web ci --no-audit --no-fund
  fi
}

web_build() {
  if [ ! -f web/dist/index.html ] || [ -n "$(find web/src web/public web/scripts web/index.html web/package-lock.json web/vite.config.* web/tsconfig*.json -newer web/dist/index.html 2>/dev/null | head -n 1)" ]; then
    echo "==> building the web app"
    npm --prefix web run build
  fi
}
