import Markdown, { type Components, type UrlTransform } from 'react-markdown';

// react-markdown builds React elements, never innerHTML: HTML in a reply shows as the text it is
// (no raw HTML plugin). Images are not shown (a reply must not make the browser fetch from
// anywhere): their alt text stands in for them. A link keeps only an http:, https: or mailto: address, any other one (javascript:,
// data:, relative) shows as plain text. Links leave the chat for a new tab without handing it this
// window.

const LINK_PROTOCOLS = new Set(['http:', 'https:', 'mailto:']);

/** The address when it is an absolute http:, https: or mailto: URL; otherwise none. */
export const safeUrl: UrlTransform = (url) => {
  try {
    return LINK_PROTOCOLS.has(new URL(url.trim()).protocol) ? url : undefined;
  } catch {
    return undefined;
  }
};

const components: Components = {
  a: ({ href, children }) =>
    href ? (
      <a href={href} target="_blank" rel="noopener noreferrer">
        {children}
      </a>
    ) : (
      <>{children}</>
    ),
};

const DISALLOWED = ['img'];

type HastNode = { type: string; tagName?: string; properties?: Record<string, unknown>; children?: HastNode[] };

/** Each image becomes its alt text, so what it described still reads (images are not shown). */
function imagesAsAltText() {
  const replace = (node: HastNode) => {
    node.children = node.children?.map((child) => {
      if (child.type === 'element' && child.tagName === 'img') {
        const alt = child.properties?.alt;
        return { type: 'text', value: typeof alt === 'string' ? alt : '' } as HastNode;
      }
      replace(child);
      return child;
    });
  };
  return replace;
}

const REHYPE_PLUGINS = [imagesAsAltText];

/** An assistant reply: Markdown (steps, lists, code, links) rendered safely. */
export function AssistantText({ text }: { text: string }) {
  return (
    <div className="member-chat__markdown">
      <Markdown
        components={components}
        rehypePlugins={REHYPE_PLUGINS}
        disallowedElements={DISALLOWED}
        unwrapDisallowed
        urlTransform={safeUrl}
      >
        {text}
      </Markdown>
    </div>
  );
}
