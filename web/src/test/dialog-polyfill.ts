// jsdom has the <dialog> element but not its methods. This stands in for what the Modal uses:
// showModal() and close() set the `open` attribute (close() fires `close`), and Escape is the
// browser's close request to the dialog shown last: a cancelable `cancel`, then close() unless
// cancelled. Focus and the inert page behind it are left to the component and the browser.

const shown: HTMLDialogElement[] = [];

function topDialog(): HTMLDialogElement | undefined {
  return shown.filter((dialog) => dialog.open && dialog.isConnected).at(-1);
}

export function installDialogPolyfill() {
  if (typeof HTMLDialogElement.prototype.showModal === 'function') return;

  HTMLDialogElement.prototype.showModal = function showModal(this: HTMLDialogElement) {
    if (this.open) throw new DOMException('The dialog is already open.', 'InvalidStateError');
    this.setAttribute('open', '');
    shown.push(this);
  };

  HTMLDialogElement.prototype.close = function close(this: HTMLDialogElement) {
    if (!this.open) return;
    this.removeAttribute('open');
    const index = shown.indexOf(this);
    if (index !== -1) shown.splice(index, 1);
    this.dispatchEvent(new Event('close'));
  };

  document.addEventListener('keydown', (event) => {
    const dialog = topDialog();
    if (event.key !== 'Escape' || event.defaultPrevented || !dialog) return;
    if (dialog.dispatchEvent(new Event('cancel', { cancelable: true }))) dialog.close();
  });
}
