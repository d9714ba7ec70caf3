//! FFmpeg over a ranged reader: a custom `AVIOContext` whose reads go to a
//! [`Source`] in aligned blocks, so that libavformat never downloads a file
//! it only needs a part of, plus the RAII owners of the FFmpeg objects this
//! crate uses (every one freed on every path: no leak on a bad file).

use crate::{Error, Result};
use ffmpeg_sys_next as ff;
use std::collections::HashMap;
use std::ffi::{c_int, c_void, CStr};
use std::ptr;
use std::sync::{Arc, Mutex};

/// What the bytes of one media file are read from.
/// What a file is read from, by range: the op ABI's [`dataio_abi::ops::RangeRead`]
/// (the core's reader over an object, or [`InMemory`] bytes).
pub use dataio_abi::ops::{InMemory, RangeRead as Source};

/// The unit of a read from the source: reads are aligned to it, so the
/// bytes fetched for a clip are its span rounded out to blocks.
pub const BLOCK: u64 = 128 << 10;

/// The most one [`Media::prefetch`] fetches (and holds) at once.
pub const MAX_PREFETCH: u64 = 32 << 20;

/// Blocks kept from the opening of a file (its header: an mp4's `moov`, an
/// mkv's segment info and cues), shared by later opens of the same file so
/// that they fetch nothing to parse it again.
#[derive(Default)]
pub struct HeaderBlocks {
    blocks: Mutex<HashMap<u64, Arc<[u8]>>>,
}

impl HeaderBlocks {
    pub fn bytes(&self) -> usize {
        self.blocks.lock().unwrap().values().map(|b| b.len()).sum()
    }

    /// Every block kept, by index.
    pub fn entries(&self) -> Vec<(u64, Arc<[u8]>)> {
        let mut v: Vec<_> = self.blocks.lock().unwrap().iter().map(|(&i, b)| (i, b.clone())).collect();
        v.sort_unstable_by_key(|e| e.0);
        v
    }

    /// Keeps block `index` (a kept index being loaded).
    pub fn insert(&self, index: u64, block: Arc<[u8]>) {
        self.blocks.lock().unwrap().insert(index, block);
    }
}

struct Io<'s> {
    source: &'s dyn Source,
    size: u64,
    pos: u64,
    /// The last blocks read (index, bytes), most recent last.
    recent: Vec<(u64, Arc<[u8]>)>,
    /// Blocks fetched ahead in one request ([`Media::prefetch`]).
    ahead: HashMap<u64, Arc<[u8]>>,
    header: Arc<HeaderBlocks>,
    /// Record the blocks read into `header` (while opening).
    record: bool,
    /// Serve reads as zeros without fetching (an index scan of a demuxer
    /// whose timestamps come from its header alone: mp4/mov).
    phantom: bool,
    /// Bytes fetched from the source.
    fetched: u64,
    error: Option<Error>,
}

impl Io<'_> {
    fn block(&mut self, index: u64) -> Result<Arc<[u8]>> {
        if let Some((_, b)) = self.recent.iter().find(|(i, _)| *i == index) {
            return Ok(b.clone());
        }
        if let Some(b) = self.header.blocks.lock().unwrap().get(&index) {
            return Ok(b.clone());
        }
        if let Some(b) = self.ahead.get(&index) {
            return Ok(b.clone());
        }
        let start = index * BLOCK;
        let len = BLOCK.min(self.size - start) as usize;
        let mut buf = vec![0u8; len];
        self.source.read_at(start, &mut buf)?;
        self.fetched += len as u64;
        let b: Arc<[u8]> = buf.into();
        if self.record {
            self.header.blocks.lock().unwrap().insert(index, b.clone());
        }
        if self.recent.len() >= 4 {
            self.recent.remove(0);
        }
        self.recent.push((index, b.clone()));
        Ok(b)
    }

    fn read(&mut self, dst: &mut [u8]) -> Result<usize> {
        let n = (dst.len() as u64).min(self.size.saturating_sub(self.pos)) as usize;
        if self.phantom {
            dst[..n].fill(0);
            self.pos += n as u64;
            return Ok(n);
        }
        let mut done = 0;
        while done < n {
            let index = self.pos / BLOCK;
            let block = self.block(index)?;
            let at = (self.pos - index * BLOCK) as usize;
            let take = (block.len() - at).min(n - done);
            dst[done..done + take].copy_from_slice(&block[at..at + take]);
            done += take;
            self.pos += take as u64;
        }
        Ok(n)
    }
}

unsafe extern "C" fn io_read(opaque: *mut c_void, buf: *mut u8, len: c_int) -> c_int {
    // SAFETY: `opaque` is the Io of the Media that owns this AVIOContext,
    // alive while the context is; FFmpeg lends `buf` for `len` bytes.
    let (io, dst) =
        unsafe { (&mut *(opaque as *mut Io<'_>), std::slice::from_raw_parts_mut(buf, len.max(0) as usize)) };
    match io.read(dst) {
        Ok(0) => ff::AVERROR_EOF,
        Ok(n) => n as c_int,
        Err(e) => {
            io.error.get_or_insert(e);
            ff::AVERROR(ff::EIO)
        }
    }
}

unsafe extern "C" fn io_seek(opaque: *mut c_void, offset: i64, whence: c_int) -> i64 {
    // SAFETY: as in io_read.
    let io = unsafe { &mut *(opaque as *mut Io<'_>) };
    let base = match whence & !ff::AVSEEK_FORCE {
        ff::AVSEEK_SIZE => return io.size as i64,
        0 => 0,              // SEEK_SET
        1 => io.pos as i64,  // SEEK_CUR
        2 => io.size as i64, // SEEK_END
        _ => return ff::AVERROR(ff::EINVAL) as i64,
    };
    match base.checked_add(offset) {
        Some(p) if p >= 0 => {
            io.pos = p as u64;
            p
        }
        _ => ff::AVERROR(ff::EINVAL) as i64,
    }
}

thread_local! {
    /// FFmpeg's last error message on this thread (its log), cleared when read.
    static LAST_LOG: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// FFmpeg's log is not printed: its errors are kept per thread and joined
/// to the typed error of the call that caused them ("moov atom not found").
#[cfg(target_arch = "x86_64")]
unsafe extern "C" fn capture_log(
    avcl: *mut c_void,
    level: c_int,
    fmt: *const std::ffi::c_char,
    vl: *mut ff::__va_list_tag,
) {
    if level > ff::AV_LOG_ERROR {
        return;
    }
    let mut buf = [0 as std::ffi::c_char; 512];
    let mut prefix: c_int = 0;
    // SAFETY: FFmpeg's own formatter over the arguments it passed us, into a
    // buffer of the size given; it NUL-terminates.
    let line = unsafe {
        ff::av_log_format_line2(avcl, level, fmt, vl, buf.as_mut_ptr(), buf.len() as c_int, &mut prefix);
        CStr::from_ptr(buf.as_ptr()).to_string_lossy().trim().to_string()
    };
    if !line.is_empty() {
        LAST_LOG.with(|l| *l.borrow_mut() = Some(line));
    }
}

fn quiet_ffmpeg_log() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // SAFETY: installing a log callback (or a level) is a plain global setting.
        unsafe {
            #[cfg(target_arch = "x86_64")]
            ff::av_log_set_callback(Some(capture_log));
            #[cfg(not(target_arch = "x86_64"))]
            ff::av_log_set_level(ff::AV_LOG_QUIET);
        }
    });
}

/// FFmpeg's last logged error on this thread, if any (and forgets it).
pub fn take_log() -> Option<String> {
    LAST_LOG.with(|l| l.borrow_mut().take())
}

/// " (FFmpeg's last logged error)" or "".
pub fn log_suffix() -> String {
    take_log().map(|l| format!(" ({l})")).unwrap_or_default()
}

/// FFmpeg's message for error code `code`.
pub fn av_error(code: c_int) -> String {
    let mut buf = [0 as std::ffi::c_char; 128];
    // SAFETY: av_strerror writes a NUL-terminated string into the buffer it is given.
    unsafe {
        ff::av_strerror(code, buf.as_mut_ptr(), buf.len());
        CStr::from_ptr(buf.as_ptr()).to_string_lossy().into_owned()
    }
}

/// An opened media file: the demuxer over a [`Source`].
pub struct Media<'s> {
    pub fmt: *mut ff::AVFormatContext,
    avio: *mut ff::AVIOContext,
    io: Box<Io<'s>>,
}

impl<'s> Media<'s> {
    /// Opens `source` (probing its container); the blocks read while
    /// opening are recorded into, and served from, `header`.
    pub fn open(source: &'s dyn Source, header: Arc<HeaderBlocks>) -> Result<Media<'s>> {
        quiet_ffmpeg_log();
        take_log();
        let size = source.size();
        if size == 0 {
            return Err(Error::corrupt("the file is empty (0 bytes)"));
        }
        let mut io = Box::new(Io {
            source,
            size,
            pos: 0,
            recent: Vec::new(),
            ahead: HashMap::new(),
            header,
            record: true,
            phantom: false,
            fetched: 0,
            error: None,
        });
        const AVIO_BUF: usize = 64 << 10;
        // SAFETY: plain FFmpeg allocation and setup; on every failure path
        // what was allocated is freed (the Media's Drop once it exists).
        unsafe {
            let buf = ff::av_malloc(AVIO_BUF) as *mut u8;
            if buf.is_null() {
                return Err(Error::invalid("out of memory"));
            }
            let opaque = &mut *io as *mut Io<'_> as *mut c_void;
            let avio = ff::avio_alloc_context(buf, AVIO_BUF as c_int, 0, opaque, Some(io_read), None, Some(io_seek));
            if avio.is_null() {
                ff::av_free(buf as *mut c_void);
                return Err(Error::invalid("out of memory"));
            }
            let mut fmt = ff::avformat_alloc_context();
            let mut media = Media { fmt: ptr::null_mut(), avio, io };
            if fmt.is_null() {
                return Err(Error::invalid("out of memory"));
            }
            (*fmt).pb = avio;
            (*fmt).flags |= ff::AVFMT_FLAG_CUSTOM_IO;
            // Never more than a few MB of probing, whatever the file claims.
            (*fmt).probesize = 4 << 20;
            let code = ff::avformat_open_input(&mut fmt, ptr::null(), ptr::null(), ptr::null_mut());
            if code < 0 {
                // avformat_open_input frees the context when it fails.
                let e = media.failure("not a media file libavformat can open", code);
                if e.message.contains("moov atom not found") {
                    // An mp4 whose index (the moov atom, written last unless
                    // faststart) never made it: cut short or still being written.
                    return Err(Error {
                        status: e.status,
                        message: format!(
                            "truncated or unfinished mp4: it has no moov atom (the index of its samples; {})",
                            e.message
                        ),
                    });
                }
                return Err(e);
            }
            media.fmt = fmt;
            if !media.has_stream_parameters() {
                let code = ff::avformat_find_stream_info(fmt, ptr::null_mut());
                if code < 0 {
                    return Err(media.failure("reading the streams failed", code));
                }
            }
            media.io.record = false;
            Ok(media)
        }
    }

    /// Every stream's codec and size known from the header alone (mp4, mkv
    /// with codec private data): then no packets are read to probe them.
    fn has_stream_parameters(&self) -> bool {
        self.streams().iter().all(|&st| {
            // SAFETY: the streams of the open context.
            let p = unsafe { &*(*st).codecpar };
            p.codec_id != ff::AVCodecID::AV_CODEC_ID_NONE
                && match p.codec_type {
                    // The pixel or sample format need not be known: the
                    // decoder finds it in the first packet it decodes.
                    ff::AVMediaType::AVMEDIA_TYPE_VIDEO => p.width > 0 && p.height > 0,
                    ff::AVMediaType::AVMEDIA_TYPE_AUDIO => p.sample_rate > 0 && p.ch_layout.nb_channels > 0,
                    _ => true,
                }
        }) && !self.streams().is_empty()
    }

    /// The error for a failed FFmpeg call: the source's own error when a
    /// read failed (the store's message), else FFmpeg's.
    pub fn failure(&mut self, what: &str, code: c_int) -> Error {
        if let Some(e) = self.io.error.take() {
            return e;
        }
        Error::corrupt(format!("{what}: {}{}", av_error(code), log_suffix()))
    }

    pub fn streams(&self) -> &[*mut ff::AVStream] {
        if self.fmt.is_null() {
            return &[];
        }
        // SAFETY: nb_streams streams at `streams` in an open context.
        unsafe {
            let f = &*self.fmt;
            if f.nb_streams == 0 || f.streams.is_null() {
                &[]
            } else {
                std::slice::from_raw_parts(f.streams, f.nb_streams as usize)
            }
        }
    }

    /// The container's short name ("mov,mp4,m4a,3gp,3g2,mj2", "matroska,webm", ...).
    pub fn format_name(&self) -> String {
        // SAFETY: an open context has an input format with a static name.
        unsafe { CStr::from_ptr((*(*self.fmt).iformat).name).to_string_lossy().into_owned() }
    }

    pub fn set_phantom(&mut self, on: bool) {
        self.io.phantom = on;
    }

    /// Fetches the blocks over bytes `[lo, hi)` that are not at hand in
    /// one read (at most [`MAX_PREFETCH`] bytes of them), for the reads
    /// that follow: a clip's span from its keyframe, known from the index,
    /// as one ranged request instead of one per block.
    pub fn prefetch(&mut self, lo: u64, hi: u64) -> Result<()> {
        let io = &mut *self.io;
        let hi = hi.min(io.size);
        if lo >= hi {
            return Ok(());
        }
        let have = |io: &Io<'_>, i: u64| {
            io.ahead.contains_key(&i)
                || io.recent.iter().any(|(j, _)| *j == i)
                || io.header.blocks.lock().unwrap().contains_key(&i)
        };
        let (mut first, mut last) = (lo / BLOCK, (hi - 1) / BLOCK);
        while first <= last && have(io, first) {
            first += 1;
        }
        while last > first && have(io, last) {
            last -= 1;
        }
        if first > last {
            return Ok(());
        }
        last = last.min(first + MAX_PREFETCH / BLOCK - 1);
        let start = first * BLOCK;
        let end = ((last + 1) * BLOCK).min(io.size);
        let mut buf = vec![0u8; (end - start) as usize];
        io.source.read_at(start, &mut buf)?;
        io.fetched += buf.len() as u64;
        for (k, chunk) in buf.chunks(BLOCK as usize).enumerate() {
            io.ahead.insert(first + k as u64, chunk.into());
        }
        Ok(())
    }

    /// Bytes fetched from the source so far.
    pub fn fetched(&self) -> u64 {
        self.io.fetched
    }

    /// Discards every stream but `keep`.
    pub fn keep_only(&mut self, keep: usize) {
        for (i, &st) in self.streams().iter().enumerate() {
            // SAFETY: the streams of the open context.
            unsafe {
                (*st).discard = if i == keep { ff::AVDiscard::AVDISCARD_DEFAULT } else { ff::AVDiscard::AVDISCARD_ALL };
            }
        }
    }

    /// The next packet (of a stream not discarded), or None at the end.
    pub fn read(&mut self, pkt: &mut Packet) -> Result<bool> {
        pkt.unref();
        // SAFETY: an open context and a live packet.
        let code = unsafe { ff::av_read_frame(self.fmt, pkt.0) };
        if code == ff::AVERROR_EOF {
            return Ok(false);
        }
        if code < 0 {
            return Err(self.failure("reading a packet failed", code));
        }
        Ok(true)
    }

    pub fn seek(&mut self, stream: usize, ts: i64, flags: c_int) -> Result<()> {
        // SAFETY: an open context.
        let code = unsafe { ff::av_seek_frame(self.fmt, stream as c_int, ts, flags) };
        if code < 0 {
            return Err(self.failure("seeking failed", code));
        }
        Ok(())
    }
}

impl Drop for Media<'_> {
    fn drop(&mut self) {
        // SAFETY: each pointer is owned here and freed once; the AVIO buffer
        // may have been replaced by FFmpeg, so it is freed through the context.
        unsafe {
            if !self.fmt.is_null() {
                ff::avformat_close_input(&mut self.fmt);
            }
            if !self.avio.is_null() {
                ff::av_freep(&mut (*self.avio).buffer as *mut *mut u8 as *mut c_void);
                ff::avio_context_free(&mut self.avio);
            }
        }
    }
}

/// An owned `AVPacket`.
pub struct Packet(pub *mut ff::AVPacket);

impl Packet {
    pub fn new() -> Result<Packet> {
        // SAFETY: plain allocation.
        let p = unsafe { ff::av_packet_alloc() };
        if p.is_null() {
            return Err(Error::invalid("out of memory"));
        }
        Ok(Packet(p))
    }
    pub fn unref(&mut self) {
        // SAFETY: a live packet.
        unsafe { ff::av_packet_unref(self.0) }
    }
    pub fn get(&self) -> &ff::AVPacket {
        // SAFETY: a live packet.
        unsafe { &*self.0 }
    }
}

impl Drop for Packet {
    fn drop(&mut self) {
        // SAFETY: owned here.
        unsafe { ff::av_packet_free(&mut self.0) }
    }
}

/// An owned `AVFrame`.
pub struct Frame(pub *mut ff::AVFrame);

impl Frame {
    pub fn new() -> Result<Frame> {
        // SAFETY: plain allocation.
        let f = unsafe { ff::av_frame_alloc() };
        if f.is_null() {
            return Err(Error::invalid("out of memory"));
        }
        Ok(Frame(f))
    }
    pub fn get(&self) -> &ff::AVFrame {
        // SAFETY: a live frame.
        unsafe { &*self.0 }
    }
}

impl Drop for Frame {
    fn drop(&mut self) {
        // SAFETY: owned here.
        unsafe { ff::av_frame_free(&mut self.0) }
    }
}

/// An opened decoder for one stream.
pub struct Decoder(pub *mut ff::AVCodecContext);

impl Decoder {
    /// A decoder for stream `index` of `media`.
    pub fn open(media: &Media<'_>, index: usize) -> Result<Decoder> {
        let stream = *media.streams().get(index).ok_or_else(|| Error::invalid(format!("no stream {index}")))?;
        // SAFETY: a stream of an open context; the context is freed by Drop
        // on every path once allocated.
        unsafe {
            let par = (*stream).codecpar;
            let codec = ff::avcodec_find_decoder((*par).codec_id);
            if codec.is_null() {
                let name = CStr::from_ptr(ff::avcodec_get_name((*par).codec_id)).to_string_lossy();
                return Err(Error::unsupported(format!("no decoder for codec {name} in this FFmpeg build")));
            }
            let d = Decoder(ff::avcodec_alloc_context3(codec));
            if d.0.is_null() {
                return Err(Error::invalid("out of memory"));
            }
            let code = ff::avcodec_parameters_to_context(d.0, par);
            if code < 0 {
                return Err(Error::corrupt(format!("bad codec parameters: {}", av_error(code))));
            }
            (*d.0).pkt_timebase = (*stream).time_base;
            // One thread per decoder: the engine decodes many samples at once.
            (*d.0).thread_count = 1;
            let code = ff::avcodec_open2(d.0, codec, ptr::null_mut());
            if code < 0 {
                return Err(Error::corrupt(format!("opening the decoder failed: {}", av_error(code))));
            }
            Ok(d)
        }
    }

    /// Sends a packet (None: the end of the stream). Invalid data is an error.
    /// Whether the decoder may skip the next packets when no other frame
    /// references them (`AVDISCARD_NONREF`): a frame the caller does not
    /// want and nothing else needs is not decoded at all. A single-threaded
    /// decoder reads this per packet.
    pub fn skip_unreferenced(&mut self, skip: bool) {
        // SAFETY: a field of the open context, read by the decoder per packet.
        unsafe {
            (*self.0).skip_frame =
                if skip { ff::AVDiscard::AVDISCARD_NONREF } else { ff::AVDiscard::AVDISCARD_DEFAULT };
        }
    }

    pub fn send(&mut self, pkt: Option<&Packet>) -> Result<()> {
        // SAFETY: an open decoder; a live packet or null (drain).
        let code = unsafe { ff::avcodec_send_packet(self.0, pkt.map_or(ptr::null(), |p| p.0)) };
        if code < 0 && code != ff::AVERROR(ff::EAGAIN) && code != ff::AVERROR_EOF {
            return Err(Error::corrupt(format!("the decoder refused a packet: {}{}", av_error(code), log_suffix())));
        }
        Ok(())
    }

    /// The next decoded frame into `frame`; false when it needs more input or is drained.
    pub fn receive(&mut self, frame: &mut Frame) -> Result<bool> {
        // SAFETY: an open decoder and a live frame.
        let code = unsafe { ff::avcodec_receive_frame(self.0, frame.0) };
        if code == ff::AVERROR(ff::EAGAIN) || code == ff::AVERROR_EOF {
            return Ok(false);
        }
        if code < 0 {
            return Err(Error::corrupt(format!("decoding failed: {}{}", av_error(code), log_suffix())));
        }
        Ok(true)
    }
}

impl Drop for Decoder {
    fn drop(&mut self) {
        // SAFETY: owned here.
        unsafe { ff::avcodec_free_context(&mut self.0) }
    }
}

/// The versions of the FFmpeg libraries loaded, as "major.minor.micro".
pub fn library_versions() -> Vec<(&'static str, String)> {
    let v = |n: u32| format!("{}.{}.{}", n >> 16, (n >> 8) & 0xff, n & 0xff);
    // SAFETY: plain version queries.
    unsafe {
        vec![
            ("libavformat", v(ff::avformat_version())),
            ("libavcodec", v(ff::avcodec_version())),
            ("libavutil", v(ff::avutil_version())),
            ("libswscale", v(ff::swscale_version())),
            ("libswresample", v(ff::swresample_version())),
        ]
    }
}
