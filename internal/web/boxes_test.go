package web_test

import (
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// patchFetch wraps the page's fetch: requests whose URL contains slow wait
// delay first; while window.__offline is set every request fails as a
// request to an unreachable server does. The page calls fetch at each
// request, so the wrapper sees them all.
const patchFetch = `(() => {
  const f = window.fetch;
  window.__slow = ''; window.__offline = false;
  window.fetch = (u, o) => {
    if (window.__offline) return Promise.reject(new TypeError('Failed to fetch'));
    if (window.__slow && String(u).includes(window.__slow)) return new Promise((r) => setTimeout(r, 1500)).then(() => f(u, o));
    return f(u, o);
  };
  return true;
})()`

// The query boxes answer the question last asked, name the key they answer,
// refuse what they cannot ask, keep 64-bit counts exact; the page fits a
// phone's width; and when the collector cannot be reached, what it shows is
// greyed and dated until it can again.
func TestDashboardBoxesAnswerTheLastQuestionAndThePageSaysWhenItIsStale(t *testing.T) {
	b := newBrowser(t)
	udpAddr, base := startUp(t, "--demo", "--demo-rate", "100")
	ctx := b.ctx
	run(t, ctx, "open the dashboard", chromedp.Navigate(base+"/"), chromedp.WaitVisible(chromedp.CSS("#ingest-cards")))
	eval[bool](t, ctx, patchFetch)
	waitText(t, ctx, "#kw-go", "the stores are known", func(string) bool { return !eval[bool](t, ctx, `document.getElementById('kw-go').disabled`) })

	t.Run("a slow answer to an older key does not replace the newer key's", func(t *testing.T) {
		eval[bool](t, ctx, `(window.__slow = 'key=111', true)`)
		run(t, ctx, "ask for key 111, then 222", chromedp.SetValue(chromedp.CSS("#kw-key"), "111"), chromedp.Click(chromedp.CSS("#kw-go")),
			chromedp.Sleep(100*time.Millisecond), chromedp.SetValue(chromedp.CSS("#kw-key"), "222"), chromedp.Click(chromedp.CSS("#kw-go")))
		waitText(t, ctx, "#kw-result", "key 222's answer", func(s string) bool { return strings.Contains(s, "key     222") })
		time.Sleep(2 * time.Second) // key 111's answer comes back meanwhile
		if got := text(t, ctx, "#kw-result"); !strings.Contains(got, "key     222") || strings.Contains(got, "111") {
			t.Errorf("after key 111's late answer the box reads %q, want key 222's", got)
		}
		eval[bool](t, ctx, `(window.__slow = '', true)`)
	})

	t.Run("an empty key or list is refused before any request", func(t *testing.T) {
		eval[bool](t, ctx, `(document.getElementById('ki-key').value = '', true)`)
		run(t, ctx, "an empty key", chromedp.Click(chromedp.CSS("#q-keyincrement button[type=submit]")))
		waitText(t, ctx, "#q-keyincrement output", "the empty key refused", func(s string) bool { return strings.HasPrefix(s, "key: enter a key") })
		eval[bool](t, ctx, `(document.getElementById('al-list').value = '', true)`)
		run(t, ctx, "an empty list", chromedp.Click(chromedp.CSS("#al-go")))
		waitText(t, ctx, "#al-result", "the empty list refused", func(s string) bool { return strings.HasPrefix(s, "list: enter a list id") })
	})

	t.Run("a count beyond 2^53 is shown exactly", func(t *testing.T) {
		rep := newReporter(t, udpAddr)
		rep.keyIncrement(3_000_000_001, 1<<53+1)
		run(t, ctx, "ask for the counter", chromedp.SetValue(chromedp.CSS("#ki-key"), "3000000001"))
		askUntil(t, ctx, "#q-keyincrement output", "#q-keyincrement button[type=submit]", "the exact count", "9,007,199,254,740,993")
	})

	t.Run("the page fits a phone's width", func(t *testing.T) {
		run(t, ctx, "a phone's viewport", chromedp.EmulateViewport(390, 844))
		time.Sleep(300 * time.Millisecond)
		if w := eval[float64](t, ctx, `document.documentElement.scrollWidth`); w > 391 {
			t.Errorf("the page is %v px wide in a 390 px viewport: it scrolls sideways", w)
		}
		run(t, ctx, "back to a desktop", chromedp.EmulateViewport(1280, 1024))
	})

	t.Run("an unreachable collector greys and dates the page until it answers again", func(t *testing.T) {
		run(t, ctx, "sample every second", chromedp.SetValue(chromedp.CSS("#interval"), "1000"),
			chromedp.Evaluate[chromedp.Void](`document.getElementById('interval').dispatchEvent(new Event('change'))`))
		eval[bool](t, ctx, `(window.__offline = true, true)`)
		waitText(t, ctx, "#status", "the banner dates the figures", func(s string) bool {
			return strings.Contains(s, "unreachable") && strings.Contains(s, "the last sample that came back")
		})
		if !eval[bool](t, ctx, `document.body.classList.contains('stale')`) {
			t.Error("the page is not marked stale while the collector is unreachable")
		}
		if h := text(t, ctx, "#health"); !strings.HasPrefix(h, "unreachable · last sample") {
			t.Errorf("the header reads %q while the collector is unreachable", h)
		}
		eval[bool](t, ctx, `(window.__offline = false, true)`)
		waitText(t, ctx, "#status", "the banner goes", func(s string) bool { return s == "" })
		if eval[bool](t, ctx, `document.body.classList.contains('stale')`) {
			t.Error("the page is still marked stale after the collector answered")
		}
	})
	checkNoProblems(t, b)
}
