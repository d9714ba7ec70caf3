//! The memory a server exposes: an anonymous zeroed mapping (`serve`) or a
//! read-only map of a file (`serve_file`, so a checkpoint bigger than RAM is
//! paged in on demand).

use crate::error::{Error, Result};
use memmap2::{Mmap, MmapMut, MmapOptions};
use std::fs::File;
use std::path::{Path, PathBuf};

enum Backing {
    Anonymous(MmapMut),
    File(Mmap),
}

pub struct Region {
    backing: Backing,
    path: Option<PathBuf>,
}

impl Region {
    /// `size` zeroed bytes, writable by clients.
    pub fn anonymous(size: usize) -> Result<Region> {
        if size == 0 {
            return Err(Error::InvalidArgument("buffer_size must be at least 1 byte".into()));
        }
        let map = MmapOptions::new()
            .len(size)
            .map_anon()
            .map_err(|e| Error::Io(format!("allocating a {size}-byte buffer: {e}")))?;
        Ok(Region { backing: Backing::Anonymous(map), path: None })
    }

    /// The whole of `path`, mapped read-only.
    pub fn file(path: &Path) -> Result<Region> {
        let shown = path.display();
        let file = File::open(path).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => Error::InvalidArgument(format!("{shown}: no such file")),
            std::io::ErrorKind::PermissionDenied => Error::AccessDenied(format!("{shown}: permission denied")),
            _ => Error::Io(format!("{shown}: {e}")),
        })?;
        let meta = file.metadata().map_err(|e| Error::Io(format!("{shown}: {e}")))?;
        if !meta.is_file() {
            return Err(Error::InvalidArgument(format!("{shown} is not a regular file")));
        }
        if meta.len() == 0 {
            return Err(Error::InvalidArgument(format!("{shown} is empty: there is nothing to serve")));
        }
        // SAFETY: a read-only shared map. If another process truncates the
        // file while it is served, touching the lost pages raises SIGBUS; the
        // docs say to serve files that are not being rewritten.
        let map = unsafe { Mmap::map(&file) }.map_err(|e| Error::Io(format!("{shown}: mmap failed: {e}")))?;
        Ok(Region { backing: Backing::File(map), path: Some(path.to_path_buf()) })
    }

    pub fn as_ptr(&self) -> *mut u8 {
        match &self.backing {
            Backing::Anonymous(m) => m.as_ptr() as *mut u8,
            Backing::File(m) => m.as_ptr() as *mut u8,
        }
    }

    pub fn len(&self) -> usize {
        match &self.backing {
            Backing::Anonymous(m) => m.len(),
            Backing::File(m) => m.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Clients may only read it.
    pub fn read_only(&self) -> bool {
        matches!(self.backing, Backing::File(_))
    }

    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }
}
