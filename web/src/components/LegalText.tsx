import Markdown, { type Components } from 'react-markdown';

// react-markdown builds React elements (never innerHTML) and drops raw HTML and unsafe URLs;
// links to other sites open in a new tab without handing it our window.
const markdownComponents: Components = {
  a: ({ href, children }) => {
    const external = href !== undefined && /^https?:/i.test(href);
    return (
      <a href={href} {...(external ? { target: '_blank', rel: 'noopener noreferrer' } : {})}>
        {children}
      </a>
    );
  },
};

/** A legal text's markdown. Its own chunk: the markdown parser is a third of the app's code. */
export function LegalText({ body }: { body: string }) {
  return (
    <Markdown components={markdownComponents} skipHtml>
      {body}
    </Markdown>
  );
}
