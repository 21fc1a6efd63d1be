#!/usr/bin/env bash
# window_test.sh HFVIEW ARCHIVE [DEM] - hfview's window path under a virtual X server (issue 15):
# starts hfview on ARCHIVE in an Xvfb display (Mesa llvmpipe through GLX) with a debug GL
# context, moves the mouse and presses keys, takes a screenshot of the screen, checks that it
# shows terrain (varied colours where the terrain is) and the panel (dark, at the top left),
# measures between two clicks (the line drawn, the measurement printed), saves a bookmark
# (Ctrl+2: the bookmarks file written), presses Esc and checks
# that hfview quits with status 0 and that KHR_debug reported no error.
# With DEM (larger than hfview's preview, 1025 samples): `hfview DEM` in an empty cache opens the
# window at once, shows the preview, then the full archive when the background pack is done
# (terrain on the screen, no GL error, Esc quits), and a second start opens it from the cache.
# Exit 77 (ctest: skipped) when Xvfb, xdotool or ImageMagick's import/convert is missing.
set -u
HFVIEW=$1
ARCHIVE=$2
DEM=${3:-}
for tool in Xvfb xdotool import convert; do
  command -v "$tool" >/dev/null || { echo "skipped: no $tool (apt-get install xvfb xdotool imagemagick)"; exit 77; }
done
work=$(mktemp -d)
xpid=""
hpid=""
cleanup() {
  [[ -n $hpid ]] && kill "$hpid" 2>/dev/null
  [[ -n $xpid ]] && kill "$xpid" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  echo "--- hfview stderr:"; cat "$work/err" "$work/err2" 2>/dev/null
  exit 1
}

# A free display number.
for n in $(seq 90 140); do
  [[ -e /tmp/.X$n-lock || -e /tmp/.X11-unix/X$n ]] && continue
  Xvfb ":$n" -screen 0 1280x800x24 -nolisten tcp >"$work/xvfb.log" 2>&1 &
  xpid=$!
  for _ in $(seq 50); do [[ -e /tmp/.X11-unix/X$n ]] && break; sleep 0.1; done
  if kill -0 "$xpid" 2>/dev/null && [[ -e /tmp/.X11-unix/X$n ]]; then export DISPLAY=":$n"; break; fi
  xpid=""
done
[[ -n ${DISPLAY:-} && -n $xpid ]] || fail "could not start Xvfb"

cd "$work"
# Under AddressSanitizer the leak check at exit would report the GL driver's (Mesa's) one-time
# allocations and change the exit status; the in-process GL tests check the viewer's own code.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
export XDG_CONFIG_HOME="$work/config"  # bookmarks go here, not to the user's config
timeout 120 "$HFVIEW" "$ARCHIVE" --size 960x600 --gl-debug --ocean on >"$work/out" 2>"$work/err" &
hpid=$!
win=$(timeout 60 xdotool search --sync --name '^hfview' | head -1)
[[ -n $win ]] || fail "no hfview window within 60 s"
xdotool mousemove --window "$win" 600 300
xdotool key --window "$win" w w d  # fly a little
# Screenshots until the view has streamed in and the panel is drawn (slow under sanitizers:
# a frame can take a second there), at most 90 s.
ok=""
for _ in $(seq 45); do
  sleep 2
  import -window root "$work/shot.png" || fail "import could not take the screenshot"
  # Terrain: the middle right of the window (outside the panel) has many colours.
  colours=$(convert "$work/shot.png" -crop 400x300+500+200 +repage -format '%k' info:)
  # The panel: ImGui's dark window at the top left (the sky would be light).
  mean=$(convert "$work/shot.png" -crop 200x60+20+40 +repage -colorspace Gray -format '%[fx:mean]' info:)
  if (( colours > 500 )) && awk -v m="$mean" 'BEGIN { exit !(m < 0.35) }'; then ok=1; break; fi
done
(( colours > 500 )) || fail "the window shows no terrain ($colours colours in its middle)"
[[ -n $ok ]] || fail "no panel at the top left (mean grey $mean)"
# The measure tool: M, two clicks on the terrain (apart in time: not a double click); hfview
# prints the measurement and draws the line (its yellow) over the view.
xdotool key --window "$win" m
xdotool mousemove --window "$win" 560 300 click 1
sleep 0.8
xdotool mousemove --window "$win" 700 420 click 1
line=0
for _ in $(seq 20); do
  sleep 1
  import -window root "$work/measure.png" || fail "import could not take the screenshot"
  line=$(convert "$work/measure.png" -fuzz 6% -fill white -opaque "rgb(255,220,40)" -fill black +opaque white \
    -colorspace Gray -format '%[fx:round(mean*w*h)]' info:)
  (( line > 200 )) && break
done
(( line > 200 )) || fail "no measure line drawn ($line yellow pixels)"
# A bookmark: Ctrl+2 keeps the view (in $XDG_CONFIG_HOME/hfview/bookmarks.json), 2 flies back.
xdotool key --window "$win" ctrl+2
xdotool key --window "$win" w w 2
for _ in $(seq 20); do [[ -s "$work/config/hfview/bookmarks.json" ]] && break; sleep 0.5; done
grep -q '"2"' "$work/config/hfview/bookmarks.json" 2>/dev/null || fail "Ctrl+2 saved no bookmark"
xdotool key --window "$win" Escape
for _ in $(seq 300); do kill -0 "$hpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$hpid" 2>/dev/null && fail "Esc did not quit hfview"
wait "$hpid"
rc=$?
hpid=""
(( rc == 0 )) || fail "hfview exited with status $rc"
grep -q "Note: GL debug: 0 errors" "$work/err" || fail "KHR_debug did not report 0 errors"
grep -q "^hfview: measured .* horizontal" "$work/out" || { cat "$work/out"; fail "the measure tool printed no measurement"; }
echo "window test: OK ($colours colours, panel grey $mean, measure line $line px: $(grep -m1 '^hfview: measured' "$work/out"))"

[[ -n $DEM ]] || exit 0
[[ -r $DEM ]] || { echo "window test (DEM): skipped, no $DEM"; exit 0; }
export XDG_CACHE_HOME="$work/cache"
timeout 180 "$HFVIEW" "$DEM" --size 800x500 --gl-debug --ocean off >"$work/out2" 2>"$work/err2" &
hpid=$!
win=$(timeout 60 xdotool search --sync --name '^hfview' | head -1)
[[ -n $win ]] || fail "hfview DEM: no window within 60 s"
for _ in $(seq 240); do grep -q "^hfview: packed " "$work/out2" && break; sleep 0.5; done
grep -q "^hfview: opened .*\.preview\.hfa" "$work/out2" || { cat "$work/out2"; fail "hfview DEM: no preview was opened"; }
grep -q "^hfview: packed .*\.hfa in " "$work/out2" || { cat "$work/out2"; fail "hfview DEM: the full archive was not opened"; }
colours=0
for _ in $(seq 30); do
  sleep 2
  import -window root "$work/dem.png" || fail "import could not take the screenshot"
  colours=$(convert "$work/dem.png" -crop 300x250+420+200 +repage -format '%k' info:)
  (( colours > 300 )) && break
done
(( colours > 300 )) || fail "hfview DEM: no terrain on the screen ($colours colours)"
xdotool key --window "$win" Escape
for _ in $(seq 300); do kill -0 "$hpid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$hpid" 2>/dev/null && fail "hfview DEM: Esc did not quit"
wait "$hpid"
rc=$?
hpid=""
(( rc == 0 )) || fail "hfview DEM exited with status $rc"
grep -q "Note: GL debug: 0 errors" "$work/err2" || fail "hfview DEM: KHR_debug did not report 0 errors"
ls "$XDG_CACHE_HOME"/hfview/*.preview.hfa >/dev/null 2>&1 && fail "hfview DEM: the preview stayed in the cache"
# The second start finds the archive in the cache.
timeout 60 "$HFVIEW" "$DEM" --headless --screenshot "$work/again.png" --size 320x200 --ocean off >"$work/out3" 2>&1 ||
  { cat "$work/out3"; fail "hfview DEM: the second start failed"; }
grep -q "from the cache" "$work/out3" || { cat "$work/out3"; fail "hfview DEM: the second start packed again"; }
echo "window test (DEM): OK (preview, then the full archive; $colours colours; reopened from the cache)"
